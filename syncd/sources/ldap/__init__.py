"""Read departments and people from OpenLDAP or Active Directory.

One module per seam: ``connection`` (servers tried in order, TLS, the bind), ``wire``
(paged searches decoded off the socket), ``dn`` (distinguished names), ``shape`` (what
is asked for), ``values`` (what an attribute's several values mean), ``mapping``
(entries into Employees), ``tree`` (the OU tree), ``forest`` (AD's other partitions and
domains), ``reader`` (one read, full or incremental, and its mark).
"""

from syncd.sources.ldap.dn import dn_key, parent_dn, rdn_attribute, rdn_value, split_dn
from syncd.sources.ldap.reader import read_ldap
from syncd.sources.ldap.shape import Shape, entry_id
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
