"""dpreg.inference."""
