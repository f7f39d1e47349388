// Anchor for the shared LibTorch precompiled header.
