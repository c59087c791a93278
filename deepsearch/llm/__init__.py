"""LLM layer: providers (OpenAI-compatible, Gemini), structured output, token accounting.

The agent depends only on `LLMClient` (client.py) and the plain types in base.py;
no SDK is imported outside the provider modules, and those import it lazily. Both
SDK providers climb one structured-output ladder (`output_modes`) and word their
errors alike (`provider_common`). Never imports `deepsearch.agent`.
"""
