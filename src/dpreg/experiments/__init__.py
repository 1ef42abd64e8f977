"""dpreg.experiments."""
