"""fedbroker for the member clouds of a federation: the typed client of the broker's API
(:mod:`fedbroker.client`); the manual's page is docs/guides/member-clouds.md."""
