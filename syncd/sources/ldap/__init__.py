"""Read departments and people from OpenLDAP or Active Directory.

The servers in ``urls`` are tried in order until one can be used. ldap3 does the
connecting (LDAPS or StartTLS with certificate checks, the simple bind) and encodes each
search request. The answers to the paged searches are read off the connection's socket
and decoded here instead: ldap3 turns every entry into dicts of formatted values through
per-attribute configuration lookups, which costs about ten times what the wire does (see
DESIGN.md, performance facts). Entries are streamed page by page and never held all at
once; their order is never relied on.

Identity is the immutable ``entryUUID`` (OpenLDAP) or ``objectGUID`` (AD), so a moved or
renamed entry is the same person or department. A read either returns a whole Directory
or raises SourceError naming the server and the step that failed.

Incremental reads (``since``): only people changed after the mark are read
(``modifyTimestamp`` or ``uSNChanged``); for ``ou_tree`` every department is still read.
Deletions cannot be seen in a delta: only a full read finds leavers.
"""

from syncd.sources.ldap.dn import dn_key, parent_dn, rdn_attribute, rdn_value, split_dn
from syncd.sources.ldap.mapping import Shape, entry_id
from syncd.sources.ldap.reader import read_ldap
from syncd.sources.ldap.wire import decode_entry, decode_result, paged_cookie

__all__ = [
    "Shape",
    "decode_entry",
    "decode_result",
    "dn_key",
    "entry_id",
    "paged_cookie",
    "parent_dn",
    "rdn_attribute",
    "rdn_value",
    "read_ldap",
    "split_dn",
]
