"""Live mode: camera (or a stream, or a file read at its own rate) in, swapped frames out, frame by frame."""
