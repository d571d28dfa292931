"""The HTTP client every first-party driver uses (`client`), and a local vendor server for their tests
(`vendor_server`)."""
from connectors.http.client import (
    VendorFault,
    VendorHTTP,
    join_url,
    pages,
    parse_retry_after,
    read_json,
    require_secrets,
    retry_after_header,
    warm,
)

__all__ = [
    "VendorFault",
    "VendorHTTP",
    "join_url",
    "pages",
    "parse_retry_after",
    "read_json",
    "require_secrets",
    "retry_after_header",
    "warm",
]
