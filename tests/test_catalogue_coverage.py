"""vLLM's own start-up messages, from every release's source, land in their category.

Each categorised message of data/vllm_messages.json is rendered as a log line in its era's format and diagnosed
alone. The floors are set just under what was measured when the catalogue signatures went in (95.7 % diagnosed,
94.5 % in the catalogue's category), so a change that loses coverage fails here.
"""

from diagnose.authoring.catalogue import coverage


def test_vllms_own_startup_messages_are_diagnosed_in_their_category():
    figures = coverage()
    assert figures.categorised > 1500
    assert figures.diagnosed / figures.categorised >= 0.95, figures.undiagnosed[:20]
    assert figures.agreeing / figures.categorised >= 0.93, figures.disagreements[:20]
