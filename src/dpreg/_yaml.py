"""YAML read safely, refusing a key written twice in one mapping.

Every YAML loader keeps the last of two equal keys, so a study, a dataset or a codebook
column written twice would silently replace the first. The workflow's config files
(:func:`dpreg.config.check_no_duplicate_keys`) and a user's codebook
(:func:`dpreg.data.codebook.load_codebook`) are read through :func:`load_unique_keys`,
which names the file, the key and both lines instead. It uses libyaml's parser where
PyYAML was built with it (about 6x faster on ``config/config.yaml``) and PyYAML's own
otherwise; both construct only plain YAML types (a ``SafeLoader``).
"""

from __future__ import annotations

import io
from typing import IO, Any

import yaml

__all__ = ["load_unique_keys"]

_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):
    """A safe loader whose mappings raise ``self.duplicate_error`` on a repeated key."""

    duplicate_error: type[Exception] = ValueError


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise loader.duplicate_error(
                f"{node.start_mark.name}: key {key!r} appears twice (lines {seen[key]} and"
                f" {line}); YAML would silently keep only the second"
            )
        seen[key] = line
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


class _NamedText(io.StringIO):
    """Text read as a stream whose ``name`` the parser puts in its marks (the file)."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(text)
        self.name = name


def load_unique_keys(
    source: str | IO[str], *, name: str | None = None, error: type[Exception] = ValueError
) -> Any:
    """Parse one YAML document safely; a key repeated in a mapping raises ``error``.

    Parameters
    ----------
    source : str or text stream
        The YAML text, or an open text file (its ``name`` names it in messages).
    name : str, optional
        The name given in messages and marks (e.g. the file the text was read from);
        defaults to the stream's ``name``.
    error : type of Exception, default ValueError
        Raised, with the name, the key and both line numbers, when a mapping repeats a
        key. Malformed YAML raises :class:`yaml.YAMLError` as usual.

    Returns
    -------
    object
        The document as plain Python values (dicts, lists, str, int, float, bool, None).

    Examples
    --------
    >>> load_unique_keys("a: 1" + chr(10) + "b: [2, 3]", name="c.yaml")
    {'a': 1, 'b': [2, 3]}
    >>> load_unique_keys(chr(10).join(["studies:", "  a: 1", "  a: 2"]), name="c.yaml")
    Traceback (most recent call last):
    ...
    ValueError: c.yaml: key 'a' appears twice (lines 2 and 3); YAML would ...
    """
    if isinstance(source, str):
        source = _NamedText(source, name or "<string>")
    elif name is not None:
        source = _NamedText(source.read(), name)
    loader = _UniqueKeyLoader(source)
    loader.duplicate_error = error
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
