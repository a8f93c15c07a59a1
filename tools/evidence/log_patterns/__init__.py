"""The log patterns a log source mined from a stream's lines (Loki's `/loki/api/v1/patterns`), counted per minute, as series."""
