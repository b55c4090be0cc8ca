"""The local multi-cloud demo (``make demo``, ``python -m demo``), apart from both services.

``federation`` starts the broker and three member clouds as processes with the commands and
variables of docker-compose.yml; ``scenario`` (also the compose ``scenario`` service) plays
transfers through the member clouds' APIs; ``sample_data`` holds the tables it sends. The demo
may import ``broker`` and ``member_cloud``; neither imports it (``tests/test_layering.py``).
"""
