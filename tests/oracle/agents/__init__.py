"""Differential tests of the built-in agents against their official code (UI-TARS' action parser, OSWorld's
prompt agent, Qwen's function-call prompt and smart_resize), run in `.venv-oracle`."""
