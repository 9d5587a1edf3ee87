"""Helpers shared by the test folders: import them as ``from tests.helpers.<module> import ...``.

- ``cli``: ``python -m dimobench ...`` as a real process;
- ``fakeserver``: a real HTTP server speaking OpenAI chat completions, Gemini and the OpenAI Batch API;
- ``interrupt``: SIGKILL a command halfway through its LLM calls;
- ``llmkeys``: the fake API keys and the check that none was written anywhere;
- ``netguard``: refuse any non-loopback lookup or connection, and a public turn as the harness passes it;
- ``importer_sources``: small source files in each imported benchmark's documented format;
- ``precomem_texts``: the sentences the PreCoMem engine tests observe;
- ``review_sheets``: read, write and fill review sheets the way a spreadsheet saves them;
- ``suites``: generate the small suites the session fixtures share.
"""
