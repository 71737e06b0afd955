"""The paste-back mask stage shared by every swapper and the enhancer: box, occlusion, area and region
masks (and the mouth mask), each 0..1 over the face, combined by keeping the smallest value."""
