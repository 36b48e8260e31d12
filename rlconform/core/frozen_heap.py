"""Imported by the fork server, last of its preloaded modules (:mod:`rlconform.core.forkserver`):
freezes its heap, so that the workers it forks skip the inherited objects in every garbage
collection. Nothing else imports this module."""

import gc

gc.freeze()
