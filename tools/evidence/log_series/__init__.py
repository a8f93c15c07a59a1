"""LogQL metric queries over the log source: lines counted per minute, as series."""
