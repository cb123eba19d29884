"""Bibliography labels like the citations ("Vaswani et al., 2017"), not [1], [2], ..."""

from __future__ import annotations

from typing import Any

from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


class AuthorYearLabels(BaseLabelStyle):
    """Bibliography labels that read like the citations in the text: "Vaswani et al., 2017"."""

    def format_labels(self, sorted_entries: Any) -> Any:
        seen: dict[str, int] = {}
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            surnames = [" ".join(person.last_names) for person in people]
            if len(surnames) > 2:
                names = f"{surnames[0]} et al."
            else:
                names = " and ".join(surnames) or entry.fields.get("institution", entry.key)
            label = f"{names}, {entry.fields.get('year', 'n.d.')}"
            seen[label] = seen.get(label, 0) + 1
            yield label if seen[label] == 1 else f"{label}{'abcdefghij'[seen[label] - 1]}"


class AuthorYearStyle(PlainStyle):
    """pybtex's "plain" entries (sorted by author), labelled by author and year."""

    default_label_style = "scratchformer-author-year"
