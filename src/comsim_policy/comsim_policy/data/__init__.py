"""Episode data for policy training: decode + cache, windows, mixtures, augmentation."""
