"""dpreg.plotting."""
