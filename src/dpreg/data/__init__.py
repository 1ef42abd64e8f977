"""dpreg.data."""
