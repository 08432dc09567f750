"""Local judge: claims that widen what their sentence restricts, flip its comparison or swap its
numbers or names, and space-grouped thousands."""

from __future__ import annotations

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.rules.denials import asserts_denied, may_deny
from ragpulse.collector.judge.text.numbers import join_digit_groups
from ragpulse.collector.judge.text.tokens import char_classes, profile, tokenise

from tests.judge_records import judged_claims

LEAVE = "All full-time employees receive 20 days of paid leave."


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


def _claim(judge: LocalJudge, answer: str, chunk: str) -> dict:
    (claim,) = judged_claims(judge, answer, chunk, query="Who gets what?")
    return claim


@pytest.mark.parametrize(
    ("claim", "chunk", "verdict"),
    [
        ("All employees receive 20 days of paid leave.", LEAVE, "unsupported"),
        (
            "The offer is valid for all customers.",
            "The offer is valid for new customers only.",
            "unsupported",
        ),
        (
            "The discount is available to all members.",
            "The discount is available only to registered members.",
            "unsupported",
        ),
        (
            "All employees receive 20 days of paid leave.",
            "Most employees receive 20 days of paid leave.",
            "contradicted",
        ),
        ("The museum is open to adults and children.", "The museum is open to adults only.", "contradicted"),
        (
            "HSBC is the largest bank in the world.",
            "HSBC is one of the largest banks in the world.",
            "unsupported",
        ),
        ("The river is the longest in Europe.", "The river is among the longest in Europe.", "unsupported"),
        ("He was the founder of the company.", "He was one of the founders of the company.", "unsupported"),
        (
            "Canberra is Australia's largest city.",
            "Canberra is Australia's largest inland city.",
            "unsupported",
        ),
        (
            "It is the most popular attraction in the city.",
            "It is the most popular tourist attraction in the city.",
            "unsupported",
        ),
        (
            "The city was designed by Walter Burley Griffin alone.",
            "The city was designed by Walter Burley Griffin and Marion Mahony Griffin.",
            "contradicted",
        ),
        # "many" leaves room for all: not said, not denied
        ("Sunlight contains all colours.", "Sunlight contains many colours.", "unsupported"),
    ],
)
def test_a_claim_that_widens_a_restriction_is_not_supported(
    judge: LocalJudge, claim: str, chunk: str, verdict: str
) -> None:
    out = _claim(judge, claim, chunk)
    assert out["verdict"] == verdict
    assert out["support_probability"] < judge.threshold
    assert (out["contradicting_chunk_ids"] == ["C1"]) == (verdict == "contradicted")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The survey had 5 000 respondents.", ["The", "survey", "had", "5,000", "respondents"]),
        ("It cost 1\u00a0250\u00a0000 euros.", ["It", "cost", "1,250,000", "euros"]),
        ("It cost 1\u202f250 euros.", ["It", "cost", "1,250", "euros"]),
        # a year, a decimal, a hyphenated compound and lone small numbers stay as written
        ("In 2020 100 people came.", ["In", "2020", "100", "people", "came"]),
        ("It measured 5 000.5 metres.", ["It", "measured", "5", "000.5", "metres"]),
        ("He won 3 100-metre races.", ["He", "won", "3", "100", "metre", "races"]),
        ("Ages 7 to 12.", ["Ages", "7", "to", "12"]),
    ],
)
def test_space_grouped_thousands_read_as_one_number(text: str, tokens: list[str]) -> None:
    assert tokenise(text) == tokens


def test_a_text_without_digit_space_digit_is_returned_as_is() -> None:
    text = "Retention is 5 years for 90% of logs."
    assert join_digit_groups(text, char_classes(text)) is text


def test_a_chunk_with_grouped_thousands_supports_the_comma_form(judge: LocalJudge) -> None:
    chunk = "The survey had 5 000 respondents in total. Most of them were students."
    (ev,) = build_evidence([{"id": "C1", "content": chunk}])
    assert "5000" in ev.whole.numbers
    for claim in (
        "The survey had 5,000 respondents in total.",
        "The survey had five thousand respondents in total.",
    ):
        assert _claim(judge, claim, chunk)["verdict"] == "supported"


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        # -- a flipped comparison
        ("Revenue rose by less than 10% in 2023.", "Revenue rose by more than 10% in 2023."),
        (
            "The bridge was closed before the storm damaged its supports.",
            "The bridge was closed after the storm damaged its supports.",
        ),
        ("The vaccine is approved for people under 65.", "The vaccine is approved for people over 65."),
        ("The tax applies to incomes below $50,000.", "The tax applies to incomes above $50,000."),
        ("Employees must submit the form after 30 days.", "Employees must submit the form within 30 days."),
        ("Prices were lower in 2022 than in 2021.", "Prices were higher in 2022 than in 2021."),
        # -- two numbers swapped
        ("The store opens at 5 and closes at 9.", "The store opens at 9 and closes at 5."),
        ("The company has 30 staff and 5,000 offices.", "The company has 5,000 staff and 30 offices."),
        (
            "Revenue was $2 million and profit $5 million in 2019.",
            "Revenue was $5 million and profit $2 million in 2019.",
        ),
        # -- two names in swapped roles
        ("France defeated Germany 2-1 in the final.", "Germany defeated France 2-1 in the final."),
        (
            "Jones was replaced by Smith as chairman in 2019.",
            "Smith was replaced by Jones as chairman in 2019.",
        ),
        ("Microsoft acquired Google in 2014.", "Microsoft was acquired by Google in 2014."),
        (
            "The treaty was signed in London and ratified in Paris.",
            "The treaty was signed in Paris and ratified in London.",
        ),
        # -- a claim asserting what a clause of the sentence denies
        (
            "It has also been shown to extend lifespan in humans by several years.",
            "Some animal studies suggest it could extend lifespan, but this has not been shown in humans.",
        ),
        (
            "The drug is approved in Europe and sold in pharmacies.",
            "The drug is approved in Europe, but it is not sold in pharmacies there.",
        ),
    ],
)
def test_a_claim_that_reverses_what_its_sentence_says_is_contradicted(
    judge: LocalJudge, claim: str, chunk: str
) -> None:
    """A flipped comparison, two numbers or two names swapped, or what a clause denies asserted:
    contradicted by the one chunk."""
    out = _claim(judge, claim, chunk)
    assert out["verdict"] == "contradicted"
    assert out["contradicting_chunk_ids"] == ["C1"]


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        # -- a claim within the sentence's restriction
        ("Full-time employees receive 20 days of paid leave.", LEAVE),
        ("All full-time employees receive 20 days of paid leave.", LEAVE),
        ("The museum is open to adults.", "The museum is open to adults only."),
        ("The museum is open only to adults and seniors.", "The museum is open only to adults and seniors."),
        # a noun before the noun names the domain more often than it restricts
        ("All staff must complete the training.", "All hospital staff must complete the training."),
        ("HSBC is one of the largest banks in the world.", "HSBC is the largest bank in the world."),
        ("HSBC is one of the largest banks in the world.", "HSBC is one of the largest banks in the world."),
        (
            "HSBC reported a profit of $5 billion.",
            "One of the largest banks, HSBC, reported a profit of $5 billion.",
        ),
        ("Canberra is Australia's largest inland city.", "Canberra is Australia's largest inland city."),
        ("She was the first president of the society.", "She was the first female president of the society."),
        ("She won the award for Best Actress.", "She won the award for Best Supporting Actress."),
        (
            "The city was designed by Walter Burley Griffin.",
            "The city was designed by Walter Burley Griffin and Marion Mahony Griffin.",
        ),
        ("He was their only son.", "They had a son and a daughter; he was their only son."),
        ("She lived in Paris for a year.", "She lived alone in Paris for a year."),
        # idioms are no quantified noun
        (
            "Salah is the all-time leading goalscorer for Egypt.",
            "Salah is Egypt's all-time leading goalscorer.",
        ),
        (
            "Pele was one of the greatest footballers of all time.",
            "Pele was one of the greatest footballers of all time.",
        ),
        # -- the same comparison
        ("Revenue rose by more than 10% in 2023.", "Revenue rose by more than 10% in 2023."),
        # the sentence says the claim's comparison too
        (
            "Employees must submit the form within 30 days.",
            "Employees must submit the form within 30 days after the end of the project.",
        ),
        ("The museum opened before the war.", "The museum opened before the war and closed after it."),
        # the opposite word compares something else
        ("More than 500 people attended.", "More than 500 people attended, fewer than last year."),
        # -- the same numbers in another order
        ("The store opens at 9 and closes at 5.", "The store opens at 9 and closes at 5."),
        # the same facts in another order
        ("The company has 30 offices and 5,000 staff.", "The company has 5,000 staff and 30 offices."),
        ("He works 9 hours a day and 5 days a week.", "He works 5 days a week and 9 hours a day."),
        # a date's day goes on either side of its month
        (
            "He was born on June 5, 1954.",
            "Alberto Malesani (born 5 June 1954) is an Italian football manager.",
        ),
        # -- names in the same roles
        ("Google acquired Microsoft in 2014.", "Microsoft was acquired by Google in 2014."),
        ("Jones replaced Smith as chairman in 2019.", "Smith was replaced by Jones as chairman in 2019."),
        ("France and Germany signed the treaty in Paris.", "Germany and France signed the treaty in Paris."),
        ("The CEO of Acme reported profits rose by 5%.", "Profits rose by 5%, the CEO of Acme reported."),
        # a passive without an agent keeps the roles; a month moves freely
        ("Sedgwick is married to Kevin Bacon.", "Sedgwick married actor Kevin Bacon on September 4, 1988."),
        ('"Sunshine" was released in August 2021.', 'In August 2021, Payne released "Sunshine," a single.'),
        # -- a denial that bounds, contrasts or agrees: no contradiction
        ("The bridge opened to traffic in 1990.", "The bridge did not open to traffic until 1990."),
        (
            "Neptune is a gaseous body without a solid surface.",
            "Neptune is a gaseous body that does not have a solid surface.",
        ),
        ("The museum is a gallery and a school.", "The museum is not only a gallery but also a school."),
    ],
)
def test_what_the_sentence_says_in_other_words_stays_supported(
    judge: LocalJudge, claim: str, chunk: str
) -> None:
    """The near misses of each rule of this file (restriction, comparison, numbers, names, denial):
    what the sentence says in other words stays supported."""
    assert _claim(judge, claim, chunk)["verdict"] == "supported"


CAT = "The oldest cat on record, Creme Puff from Texas, lived to 38 years and 3 days."


def test_a_name_no_chunk_has_takes_the_one_chunk_rule_away(judge: LocalJudge) -> None:
    """The pair model alone would call the paraphrase supported; the swapped place name
    leaves the verdict to the calibrated probability, which is under the threshold."""
    claim = "The oldest cat ever recorded, Creme Puff from {}, reached 38 years of age."
    out = _claim(judge, claim.format("Florida"), CAT)
    assert out["verdict"] == "unsupported"
    assert out["support_probability"] < judge.threshold
    assert _claim(judge, claim.format("Texas"), CAT)["verdict"] == "supported"


@pytest.mark.parametrize(
    ("claim", "sentence", "denied"),
    [
        ("It has been shown in humans.", "It may work, but this has not been shown in humans.", True),
        # a claim that negates in its own words may say what the sentence denies
        ("Gold is resistant to chemical reactions.", "Dissolving gold is not a chemical reaction.", False),
        ("Neptune is a body without a solid surface.", "Neptune does not have a solid surface.", False),
        # names contrasted, not a predicate denied
        ("Posts named Barack Obama.", "Posts named John Hanson, not Barack Obama.", False),
        # one content stem is too little to go on
        ("The drug is sold in Europe.", "The drug is sold in Europe but not in Canada.", False),
    ],
)
def test_denied_phrases(claim: str, sentence: str, denied: bool) -> None:
    cp, sp = profile(claim), profile(sentence)
    assert (may_deny(cp, sp) and asserts_denied(cp, sp)) == denied
