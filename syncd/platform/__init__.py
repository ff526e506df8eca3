"""The platform's admin API client: token sharing, retries, envelope errors, records.

with PlatformClient(settings.platform, TokenStore(engine)) as platform:
    root = platform.root()
    result = platform.import_employees(bodies)
"""

from syncd.platform._tokens import MemoryTokenStore, TokenStoreLike
from syncd.platform.client import PlatformClient, app_key
from syncd.platform.schemas import EmployeeRecord, ImportResult, Node, PositionRecord

__all__ = [
    "EmployeeRecord",
    "ImportResult",
    "MemoryTokenStore",
    "Node",
    "PlatformClient",
    "PositionRecord",
    "TokenStoreLike",
    "app_key",
]
