"""The similarity seam: lexical scores, thresholds on hand-made pairs, embedding
fallback, dedup."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.agent.retrieval.lexical import same_content_words, word_jaccard, words
from deepsearch.agent.retrieval.similarity import (
    EMBEDDING_DEDUP_THRESHOLD,
    EmbeddingSimilarity,
    LexicalSimilarity,
    Similarity,
    dedup,
)
from deepsearch.errors import ProviderError
from deepsearch.text import numbers_in

# Reworded duplicates: the same search request.
DUP_PAIRS = [
    ("capital of France", "France capital"),
    ("when was the Eiffel Tower built", "Eiffel Tower built when"),
    ("Eiffel Tower construction date", "eiffel tower construction dates"),
    ("population of Tokyo 2023", "Tokyo population in 2023"),
    ("who founded OpenAI", "OpenAI founders"),
    ("best python web frameworks", "best Python web framework"),
    ("side effects of ibuprofen", "ibuprofen side effects"),
    ("How tall is Mount Everest?", "how tall is mount everest"),
    ("Apple quarterly revenue Q3 2024", "Apple Q3 2024 quarterly revenue"),
    ("Bundeskanzler Deutschland 2024", "Deutschland Bundeskanzler 2024"),
    ("climate change effects on coral reefs", "effects of climate change on coral reef"),
    ("Rust async runtime comparison", "comparison of Rust async runtimes"),
    ("what is the boiling point of water at altitude", "boiling point of water at high altitude"),
    ("GDP growth rate India 2023", "India GDP growth rate 2023"),
    ("Marie Curie Nobel prizes", "Nobel prizes of Marie Curie"),
    ("東京 人口 2023", "2023 東京 人口"),
]
# Same topic, different request: must both survive dedup.
DISTINCT_PAIRS = [
    ("capital of France", "capital of Germany"),
    ("when was the Eiffel Tower built", "how tall is the Eiffel Tower"),
    ("population of Tokyo 2023", "population of Osaka 2023"),
    ("who founded OpenAI", "who is the CEO of OpenAI"),
    ("side effects of ibuprofen", "ibuprofen dosage for children"),
    ("Apple quarterly revenue Q3 2024", "Apple stock price history"),
    ("climate change effects on coral reefs", "coral reef fish species list"),
    ("Rust async runtime comparison", "Rust borrow checker tutorial"),
    ("GDP growth rate India 2023", "inflation rate India 2023"),
    ("Marie Curie Nobel prizes", "Marie Curie childhood in Warsaw"),
    ("best python web frameworks", "python data science libraries"),
    ("Mount Everest height", "Mount Everest first ascent"),
    ("Bundeskanzler Deutschland 2024", "Bundespräsident Deutschland 2024"),
    ("GDP of France 2023", "GDP of France 2024"),
]
# (answer sentence, the source sentence it restates, an unrelated sentence of that page)
CITE_TRIPLES = [
    (
        "The Eiffel Tower was completed in 1889 for the World's Fair.",
        "Construction of the tower finished in March 1889, in time for the 1889 "
        "Exposition Universelle (World's Fair).",
        "The tower is repainted every seven years and requires 60 tonnes of paint.",
    ),
    (
        "Tokyo had about 14 million residents in 2023.",
        "As of 2023, the population of the Tokyo Metropolis was estimated at 14.09 million residents.",
        "Tokyo hosted the Summer Olympics in 1964 and again in 2021.",
    ),
    (
        "Marie Curie won Nobel prizes in both physics and chemistry.",
        "She was the first person to win a Nobel Prize twice, and the only person to win "
        "a Nobel Prize in two scientific fields: physics and chemistry.",
        "Curie was born in Warsaw, in what was then the Kingdom of Poland.",
    ),
    (
        "Ibuprofen can cause stomach bleeding.",
        "Common side effects of ibuprofen include heartburn and a rash, and it may "
        "increase the risk of stomach bleeding.",
        "Ibuprofen was discovered in 1961 by Stewart Adams and John Nicholson.",
    ),
    (
        "Python 3.11 is up to 60% faster than Python 3.10.",
        "CPython 3.11 is between 10-60% faster than CPython 3.10, with an average "
        "speedup of 1.25x on the standard benchmark suite.",
        "The release also adds exception groups and the new except* syntax.",
    ),
]

LEX = LexicalSimilarity()


def test_lexical_satisfies_protocol() -> None:
    assert isinstance(LEX, Similarity)
    assert isinstance(EmbeddingSimilarity(_no_embeddings), Similarity)


async def test_identical_text_scores_one_and_unrelated_zero() -> None:
    scores = await LEX.scores("Eiffel Tower height", ["Eiffel Tower height", "zebra quokka"])
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] == pytest.approx(0.0)


async def test_relevant_snippet_outranks_others() -> None:
    snippets = [
        "Paris is the capital of France and hosts the Louvre.",
        "The Eiffel Tower was built between 1887 and 1889 by Gustave Eiffel's company.",
        "Tokyo is the most populous metropolitan area in the world.",
    ]
    scores = await LEX.scores("when was the eiffel tower built", snippets)
    assert max(range(3), key=scores.__getitem__) == 1


async def test_char_ngrams_match_inflections() -> None:
    # No shared whole word, only shared stems: the character block must see it.
    scores = await LEX.scores("Konstruktion Türme", ["Turmkonstruktionen", "Wettervorhersage"])
    assert scores[0] > 0.1 > scores[1]


async def test_matrix_shape_and_empty_inputs() -> None:
    grid = await LEX.matrix(["a b c", "d e f"], ["a b c", "x y z", "d e f"])
    assert len(grid) == 2 and all(len(row) == 3 for row in grid)
    assert grid[0][0] == pytest.approx(1.0) and grid[1][2] == pytest.approx(1.0)
    assert await LEX.matrix([], ["x"]) == []
    assert await LEX.matrix(["x"], []) == [[]]
    assert await LEX.scores("x", []) == []


def test_dedup_threshold_separates_documented_pairs() -> None:
    """The numbers in the module docstring: cosine alone for what the word rule misses."""
    for a, b in DISTINCT_PAIRS:
        # Pairs differing only in a number are kept apart by the numbers veto instead.
        if numbers_in(a) == numbers_in(b):
            assert LEX.score_sync(a, [b])[0] < LEX.dedup_threshold, (a, b)
        assert not same_content_words(a, b), (a, b)
        assert word_jaccard(a, b) < 0.8, (a, b)
    missed = [(a, b) for a, b in DUP_PAIRS if not same_content_words(a, b)]
    assert len(missed) <= 1
    for a, b in missed:
        assert LEX.score_sync(a, [b])[0] >= LEX.dedup_threshold, (a, b)


def test_cite_threshold_separates_support_from_unrelated() -> None:
    for answer, support, unrelated in CITE_TRIPLES:
        good, bad = LEX.score_sync(answer, [support, unrelated])
        assert good >= LEX.cite_threshold > bad, (answer, good, bad)


async def test_dedup_drops_duplicates_keeps_distinct() -> None:
    for a, b in DUP_PAIRS:
        assert await dedup([b], [a], LEX) == [], (a, b)
    for a, b in DISTINCT_PAIRS:
        assert await dedup([b], [a], LEX) == [b], (a, b)


async def test_dedup_within_batch_keeps_first_and_order() -> None:
    new = ["Tokyo population 2023", "  ", "population of Tokyo in 2023", "Osaka population 2023"]
    assert await dedup(new, [], LEX) == ["Tokyo population 2023", "Osaka population 2023"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(min_size=0, max_size=40), max_size=8),
    st.lists(st.text(min_size=0, max_size=40), max_size=5),
)
async def test_dedup_properties(new: list[str], existing: list[str]) -> None:
    kept = await dedup(new, existing, LEX)
    # A subsequence of the input, nothing blank, nothing equal to an existing item.
    it = iter(new)
    assert all(any(k == n for n in it) for k in kept)
    assert all(k.strip() for k in kept)
    assert not set(kept) & set(existing)
    # Idempotent: running it again against itself drops nothing more.
    assert await dedup(kept, [], LEX) == kept


@pytest.mark.timeout(15)  # a hang guard, not a timing (~0.07 s cold): that is `make bench`'s
async def test_scores_a_url_pool() -> None:
    snippets = [
        f"snippet {i} about towers, iron lattices and the {i}th exhibition" for i in range(200)
    ]
    snippets[137] = "The Eiffel Tower was built from 1887 to 1889."
    scores = await LEX.scores("when was the eiffel tower built", snippets)
    assert len(scores) == 200 and max(range(200), key=scores.__getitem__) == 137


# ------------------------------------------------------------------ embeddings


async def _no_embeddings(texts: list[str]) -> list[list[float]] | None:
    return None


async def test_embedding_similarity_uses_vectors_and_its_thresholds() -> None:
    table = {"cat": [1.0, 0.0], "kitten": [0.9, 0.1], "car": [0.0, 1.0]}
    calls: list[list[str]] = []

    async def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [table[t] for t in texts]

    sim = EmbeddingSimilarity(embed)
    scores = await sim.scores("cat", ["kitten", "car"])
    assert scores[0] > 0.98 and scores[1] == pytest.approx(0.0)
    assert calls == [["cat", "kitten", "car"]]
    assert sim.name == "embedding" and sim.dedup_threshold == EMBEDDING_DEDUP_THRESHOLD
    assert await dedup(["kitten", "car"], ["cat"], sim) == ["car"]


async def test_embedding_falls_back_to_lexical_and_stays_there() -> None:
    calls = 0

    async def failing(texts: list[str]) -> list[list[float]] | None:
        nonlocal calls
        calls += 1
        raise ProviderError("embeddings endpoint returned 404")

    sim = EmbeddingSimilarity(failing)
    scores = await sim.scores("Eiffel Tower height", ["Eiffel Tower height", "zebra"])
    assert scores == pytest.approx(
        LEX.score_sync("Eiffel Tower height", ["Eiffel Tower height", "zebra"])
    )
    assert sim.dedup_threshold == LEX.dedup_threshold and "lexical" in sim.name
    await sim.scores("x", ["y"])
    assert calls == 1  # sticky: unavailable once, not asked again


async def test_embedding_none_means_unavailable() -> None:
    sim = EmbeddingSimilarity(_no_embeddings)
    assert await sim.matrix(["a b"], ["a b"]) == [[pytest.approx(1.0)]]
    assert sim.cite_threshold == LEX.cite_threshold


def test_make_similarity() -> None:
    from deepsearch.agent.retrieval.similarity import make_similarity

    assert isinstance(make_similarity(None), LexicalSimilarity)
    assert isinstance(make_similarity(_no_embeddings), EmbeddingSimilarity)


async def test_cjk_is_tokenized_per_character() -> None:
    a = "埃菲尔铁塔于1889年建成，以工程师居斯塔夫·埃菲尔命名。"
    b = "铁塔于1889年建成，得名于设计它的桥梁工程师居斯塔夫·埃菲尔。"
    scores = await LEX.scores(a, [b, "东京是日本的首都，人口约一千四百万。"])
    assert scores[0] > LEX.cite_threshold > scores[1]


def test_words_split_han_and_kana_one_character_each() -> None:
    # A \w run mixing scripts ("1889年建成") keeps its non-CJK part whole.
    assert words("東京タワー is tall, 1889年建成") == (
        *"東京タワー", "is", "tall", "1889", *"年建成"
    )  # fmt: skip


async def test_dedup_is_also_a_method_of_both_backends() -> None:
    assert await LEX.dedup(["France capital", "Osaka population"], ["capital of France"]) == [
        "Osaka population"
    ]
    sim = EmbeddingSimilarity(_no_embeddings)
    assert await sim.dedup(["France capital"], ["capital of France"]) == []


async def test_the_numbers_veto_reads_numbers_as_deepsearch_text_defines_them() -> None:
    # One number however it is written: these are duplicates (the veto once read
    # "1,000" as 1 and 000, and "covid19" as a different number from "covid 19").
    assert (
        await dedup(["GDP of France in 1000 billion"], ["GDP of France in 1,000 billion"], LEX)
        == []
    )
    assert await dedup(["covid 19 cases in Germany"], ["covid19 cases in Germany"], LEX) == []
    # Different numbers stay two requests, decimals included.
    kept = await dedup(["Python 3.12 release date"], ["Python 3.11 release date"], LEX)
    assert kept == ["Python 3.12 release date"]
