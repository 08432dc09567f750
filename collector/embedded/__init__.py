"""The embedded collector: every stage in the application's process, fed by the agent directly."""
