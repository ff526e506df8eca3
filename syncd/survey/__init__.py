"""What syncd finds on the platform: the view planning reads, and where a clean apply
leaves the cursors.

A floor above the API client (``syncd.platform``) and the state store
(``syncd.snapshot``), below the runner: it asks the client for what the platform holds
and compares it with what the store says syncd last wrote. The rooms: ``view`` (the
view of the platform read before each plan: department and people drift, deletions
there, accounts to adopt), ``records`` (the employee records as drift judges them, part
by part) and ``settle`` (after a clean apply: the people's cursor past syncd's own
writes, and the nodes' counts).
"""
