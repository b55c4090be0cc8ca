"""Linkage across releases: a new release judged together with the earlier ones it can be
joined with.

A destination that receives several releases drawn from one source can join them. Each release
may be k-anonymous alone while together they isolate people: release 1 generalizes age and keeps
the postcode exact, release 2 keeps age exact and generalizes the postcode; someone who knows a
person's age and postcode finds them in one class of each, and the people in *both* classes can
be far fewer than k (the "intersection" of Wang and Fung 2006, *Anonymizing sequential releases*;
the composition attack of Ganta, Kasiviswanathan and Smith 2008 intersects the sensitive values
the same way; m-invariance, Xiao and Tao 2007, is the same concern for re-publication).

The model, and its assumption. The broker remembers, per (source, destination), what each
approved transfer released: its quasi-identifier columns and its classes (the distinct released
tuples, with the people holding each), never the data. It assumes the **same people** appear in
every release from one source (releases drawn from one registry), and that the destination can
tell which records of two releases are the same person (a shared column, or the released values
themselves). For a new release, each row's *original* values on an earlier release E's
quasi-identifiers are mapped to the classes of E whose labels hold them (a raw value is in a
label when equal, inside the range ``"30-39"``, matching the mask ``"570*"``, in the set
``"F, M"``, in the calendar unit ``"2024-03"`` or ``"2020/2024"`` (a date read however it is
written, :mod:`broker.columns.precision`), in the top category ``"90+"``, or under ``"*"``). Rows
that fall in no class of E are people E did not hold. The others are grouped by (new class, the set
of E classes they fall in): a **joint class**. Everyone in a joint class is among the people an
attacker who knows a member's values cannot tell apart after the join (the true candidates may
be more: people whose labels in E overlap), so its size is a lower bound of that crowd, and the
rule holds joint classes to the policy's k (and l, for a sensitive attribute released in both).
When the new table lacks some of E's quasi-identifiers, rows are placed on the ones it has (the
classes of E they may be in); when it has none of them, there is nothing to join on and the
release is not linked (a destination that could still tell the same people apart, by a key of
its own, is beyond what the broker can see).

Sizes count people as the engine does (a tuple's people, summed over the tuples of the class).
A label the broker cannot read (a value of a policy's own hierarchy, say) holds no raw value:
such people count as absent from E, which the README lists as a limit.

Cost: one count table of the new table over both releases' columns. Per column, a label written
as a value is looked up; the others (ranges, sets, masks, dates) are each tested once over the
column's distinct values, which are then grouped by the set of labels holding them; a tuple's
classes are the intersection, over columns, of the classes its groups allow (one set operation per
distinct combination of groups, not per tuple and class).

The code, one module per part: :mod:`~broker.fsla.linkage.releases` (what is remembered),
:mod:`~broker.fsla.linkage.labels` (which raw values a label holds),
:mod:`~broker.fsla.linkage.joint` (joint classes), :mod:`~broker.fsla.linkage.engine` (on an
engine's count tables) and :mod:`~broker.fsla.linkage.rule` (the rule).
"""

from broker.fsla.linkage.engine import assess, released_classes
from broker.fsla.linkage.joint import earlier_cells, joint_of
from broker.fsla.linkage.labels import label_holds
from broker.fsla.linkage.releases import History, Joint, Release
from broker.fsla.linkage.rule import RULE, linkage_rules, lookback

__all__ = [
    "RULE",
    "History",
    "Joint",
    "Release",
    "assess",
    "earlier_cells",
    "joint_of",
    "label_holds",
    "linkage_rules",
    "lookback",
    "released_classes",
]
