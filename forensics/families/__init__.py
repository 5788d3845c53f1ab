"""Framework dialects: how one family of agent software records its work (adk/), apart
from the transport it arrives through (sources/)."""
