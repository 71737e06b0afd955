"""Video: the ffmpeg binary and pure command builders, probing, streaming reader/writer, chunks."""
