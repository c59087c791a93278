from deepsearch.llm.tokens import count_tokens, get_encoding


def test_offline_tokenizer_matches_known_ids() -> None:
    # o200k ids for "hello world" as produced by tiktoken with the downloaded file.
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert count_tokens("") == 0
