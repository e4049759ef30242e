"""The offline local model (SmolLM2-135M-Instruct by default): GGUF conversion, the numpy and
torch forward passes, batching and the converted-model cache.  Private modules; the backend
class is registered as ``ragmeter.backends._local._backend:LocalBackend``."""
