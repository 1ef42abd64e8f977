"""dpreg._yaml.load_unique_keys: the one YAML reader of config files and codebooks."""

from __future__ import annotations

import io

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg._yaml import load_unique_keys
from dpreg.data.codebook import CodebookError

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
keys = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, min_size=1, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(document=st.dictionaries(keys, documents, min_size=1, max_size=5))
def test_a_document_without_repeated_keys_reads_as_pyyamls_safe_load(document):
    text = yaml.safe_dump(document)
    assert load_unique_keys(text, name="d.yaml") == yaml.safe_load(text) == document


@settings(max_examples=60, deadline=None)
@given(
    document=st.dictionaries(keys, scalars, min_size=1, max_size=5),
    depth=st.integers(0, 3),
)
def test_a_repeated_key_at_any_depth_names_the_file_the_key_and_both_lines(document, depth):
    key = next(iter(document))
    lines = [f"{k}: 1" for k in document] + [f"{key}: 2"]  # the first key again, last
    for level in range(depth):  # nest the mapping under `depth` parent keys
        lines = [f"p{level}:"] + ["  " + line for line in lines]
    first = depth + 1
    second = depth + len(document) + 1
    with pytest.raises(ValueError) as info:
        load_unique_keys("\n".join(lines), name="deep.yaml")
    assert str(info.value).startswith(
        f"deep.yaml: key {key!r} appears twice (lines {first} and {second})"
    )


def test_the_error_class_and_a_streams_own_name_are_used():
    text = "a: 1\nb: 2\na: 3\n"
    with pytest.raises(CodebookError, match=r"^book.yaml: key 'a' appears twice \(lines 1 and 3"):
        load_unique_keys(text, name="book.yaml", error=CodebookError)
    stream = io.StringIO(text)
    stream.name = "from_stream.yaml"
    with pytest.raises(ValueError, match=r"^from_stream.yaml: key 'a'"):
        load_unique_keys(stream)
    with pytest.raises(ValueError, match=r"^renamed.yaml: key 'a'"):
        load_unique_keys(io.StringIO(text), name="renamed.yaml")


def test_malformed_yaml_raises_yamls_own_error_with_a_line():
    with pytest.raises(yaml.YAMLError) as info:
        load_unique_keys("a: [1, 2\nb: 3\n", name="bad.yaml")
    assert info.value.problem_mark.line >= 0


def test_only_plain_types_are_constructed():
    with pytest.raises(yaml.YAMLError):
        load_unique_keys("!!python/object/apply:os.system ['true']", name="evil.yaml")
