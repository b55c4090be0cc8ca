"""The federation as a whole, for its administrators: the overview of members, their health,
transfers per pair of jurisdictions, decisions over time and deliveries (``GET
/v1/federation/overview``, and the same as a page).

Explained in ``docs/guides/admins.md``.
"""
