"""The evaluation harness: replayable diagnosis cases (`cases/<name>/case.yaml`) and `manage.py eval`."""
