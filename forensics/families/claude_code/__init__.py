"""Claude Code: its transcripts (transcript.py) and the windows its requests held (windows.py)."""
