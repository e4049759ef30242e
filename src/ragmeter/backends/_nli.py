"""A local sequence-classification NLI (or hallucination) model: p(premise supports hypothesis).

Opt-in (``pip install 'ragmeter[nli]'``: torch and transformers).  The model is a folder
saved with ``save_pretrained`` or a name already in the local Hugging Face cache; it is
loaded with ``local_files_only=True``, so nothing is ever downloaded at run time.  Pairs
are scored in batches, on the GPU when torch sees one.

Which output means "supported" comes from the model's own ``id2label``: a label named
entailment / entailed / supported / consistent / faithful (case-insensitive); a model with
a single output is read as a logit of "supported" (HHEM-style).  Any other model is a
:class:`~ragmeter.errors.ConfigError` naming its labels: a guessed label would be noise
printed as measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, MissingDependencyError

__all__ = ["NliModel", "SUPPORT_LABELS", "support_index"]

SUPPORT_LABELS = ("entailment", "entailed", "entails", "supported", "consistent", "faithful")
INSTALL = "pip install 'ragmeter[nli]'"


def support_index(id2label: dict[int, str] | None, num_labels: int,
                  component: str = "ragmeter") -> int | None:
    """The output index meaning "supported" (None: a single logit), from ``id2label``."""
    if num_labels == 1:
        return None
    for index, name in sorted((id2label or {}).items()):
        if str(name).strip().lower() in SUPPORT_LABELS:
            return int(index)
    names = ", ".join(str(v) for _, v in sorted((id2label or {}).items())) or "none"
    raise ConfigError(f"{component}: the NLI model's labels ({names}) name no supported "
                      f"class. Fix: use a model whose config.json id2label names one of "
                      f"{', '.join(SUPPORT_LABELS)} (or a single-output model).")


def _resolve(path_or_name: str, component: str) -> tuple[Path, str]:
    """The model's folder on disk and its name for signatures (``name@fingerprint``)."""
    from ragmeter.backends._embed import folder_identity

    folder = Path(path_or_name).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ConfigError(f"{component}: --nli-model {path_or_name!r} is a folder without "
                              "config.json. Fix: give the folder a model was saved to "
                              "(model.save_pretrained(FOLDER)).")
        return folder, folder_identity(folder)
    try:
        from huggingface_hub import snapshot_download
        cached = Path(snapshot_download(path_or_name, local_files_only=True))
    except Exception as exc:  # noqa: BLE001 - any miss is the same user-fixable problem
        raise ConfigError(f"{component}: --nli-model {path_or_name!r} is neither a folder nor "
                          "a model in the local Hugging Face cache (ragmeter never downloads "
                          "at run time). Fix: download it once yourself (huggingface-cli "
                          "download NAME) or give the folder it was saved to.") from exc
    return cached, f"{path_or_name}@{folder_identity(cached).rsplit('@', 1)[1]}"


class NliModel:
    """A sequence-classification model scoring (premise, hypothesis) pairs.

    ``batch_size`` pairs per forward pass; ``max_length`` tokens per pair (the longer text,
    usually the premise, is cut first); ``device``: ``cuda`` when available, else ``cpu``
    (or as given).
    """

    def __init__(self, path_or_name: str, *, batch_size: int = 16, max_length: int = 512,
                 device: str | None = None, component: str = "ragmeter") -> None:
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise MissingDependencyError("the NLI strategy (torch and transformers)",
                                         INSTALL) from None
        if batch_size < 1:
            raise ConfigError(f"{component}: the NLI batch size must be at least 1; got "
                              f"{batch_size}.")
        folder, self.identity = _resolve(path_or_name, component)
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self._tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(
                str(folder), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{component}: --nli-model {path_or_name!r} could not be loaded "
                              f"as a sequence-classification model with its tokenizer "
                              f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]}). Fix: "
                              "give a folder saved with save_pretrained (model and "
                              "tokenizer).") from exc
        self._model = model.to(self.device).eval()
        self._index = support_index(dict(model.config.id2label or {}),
                                    int(model.config.num_labels), component)
        self.batch_size = batch_size
        self.max_length = max_length

    def support(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(supported) of every (premise, hypothesis) pair, in order."""
        torch = self._torch
        out: list[float] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start:start + self.batch_size]
            enc: Any = self._tok([p for p, _ in batch], [h for _, h in batch], padding=True,
                                 truncation="longest_first",
                                 max_length=self.max_length, return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                logits = self._model(**enc).logits.float()
            if self._index is None:
                probs = torch.sigmoid(logits[:, 0])
            else:
                probs = torch.softmax(logits, dim=-1)[:, self._index]
            out.extend(float(v) for v in probs.cpu().tolist())
        return out
