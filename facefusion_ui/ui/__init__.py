"""The Gradio page: tabs Single, Batch and Settings over the same job queue as the command line."""
