// Not built: a kernel body, for the layer check.
