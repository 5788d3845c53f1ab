"""What-if: a tool-output guard replayed on stored history, before it ships
(docs/whatif.md). guard.py: the guard and its rules; replay.py: the counterfactual
results, calls, turns and sessions; audit.py: `forensics guards`."""
