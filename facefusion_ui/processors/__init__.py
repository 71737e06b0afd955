"""Frame processors: the Processor protocol, the registry of built-ins and plugins, and the built-ins."""
