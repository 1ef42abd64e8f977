"""dpreg.theory."""
