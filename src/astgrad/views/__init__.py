"""Ways to look at what astgrad made: notebook display (display.py) and graph pictures (graphs/)."""
