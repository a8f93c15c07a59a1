"""What diagnosis announces to the apps built on it (they depend on diagnosis, never the reverse)."""

from django.dispatch import Signal

# A reviewer recorded a review of `session` (`review`); sent inside the review's transaction.
session_reviewed = Signal()
# The reaper ended sessions FAILED after their worker died (`session_pks`); sent once that has committed.
sessions_reaped = Signal()
