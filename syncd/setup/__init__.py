"""Getting started: new settings and units (``syncd init``), the demo (``syncd demo``)."""
