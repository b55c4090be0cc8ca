"""Build broker/identifiers/data/{first,last}_names.txt from Faker's person providers.

Faker (MIT licence) ships, per locale, the given names and family names its fake people are
drawn from, in the frequency order of their sources. This keeps the Latin-script ones of every
locale, folded the way the detector folds text (accents removed, lower case), one name a line,
with Faker's copyright notice at the top: a few hundred kilobytes read in milliseconds, where
loading Faker itself takes half a second and 20 MB. Run it after upgrading Faker:

    python scripts/build_name_lists.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import faker
import faker.providers.person as person

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from broker.identifiers.people import name_key

DATA = Path(__file__).resolve().parents[1] / "broker" / "identifiers" / "data"
NOTICE = f"""# Derived from Faker {faker.VERSION}'s person providers by scripts/build_name_lists.py.
# Faker: Copyright (c) 2012 Daniele Faraglia. Permission is hereby granted, free of charge, to
# any person obtaining a copy of this software and associated documentation files (the
# "Software"), to deal in the Software without restriction, including without limitation the
# rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the
# Software, and to permit persons to whom the Software is furnished to do so, subject to the
# following conditions: The above copyright notice and this permission notice shall be included
# in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS",
# WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
"""
FIRST = ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary")
LAST = ("last_names", "last_names_male", "last_names_female")


def names_of(provider, attributes) -> list[str]:
    found = []
    for attribute in attributes:
        values = getattr(provider, attribute, ())
        if isinstance(values, property):
            continue
        found += list(values.keys() if isinstance(values, dict) else values)
    return found


def main() -> None:
    first: set[str] = set()
    last: set[str] = set()
    for module in pkgutil.iter_modules(person.__path__):
        provider = importlib.import_module(f"{person.__name__}.{module.name}").Provider
        for names, into in ((names_of(provider, FIRST), first), (names_of(provider, LAST), last)):
            for name in names:
                key = name_key(name)
                if key is not None:
                    into.add(key)
    for file, names in (("first_names.txt", first), ("last_names.txt", last)):
        (DATA / file).write_text(NOTICE + "\n".join(sorted(names)) + "\n", encoding="utf-8")
        print(f"{file}: {len(names):,} names")


if __name__ == "__main__":
    main()
