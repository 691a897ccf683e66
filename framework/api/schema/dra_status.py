"""A ResourceClaim's status.devices (DRAResourceClaimDeviceStatus, beta and on in 1.35) as
kube-apiserver validates it (validateDeviceStatus, validateNetworkDeviceData and
validation.IsValidInterfaceAddress), with upstream's paths and messages: each entry names
a device the claim's allocation holds (driver, pool, device; no entry twice), at most 8
conditions, data a JSON object of at most 10 KiB, and networkData's interfaceName
(256 bytes), hardwareAddress (128 bytes) and up to 16 distinct IPs in canonical CIDR form."""
from __future__ import annotations

import ipaddress
import re
from typing import Any, Mapping

from framework.api.schema.dra import _dicts, _text, device_ref, raw_extension, too_long, too_many
from framework.api.schema.types import Ctx, join
from framework.api.errors import ValidationError
from framework.api.validation import duplicate, invalid

MAX_CONDITIONS = 8  # resource.AllocatedDeviceStatusMaxConditions
DATA_MAX = 10 * 1024  # resource.AllocatedDeviceStatusDataMaxLength
MAX_IPS = 16  # resource.NetworkDeviceDataMaxIPs
INTERFACE_NAME_MAX = 256
HARDWARE_ADDRESS_MAX = 128
_SLOPPY_V4 = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d+)")
_NOT_CIDR = "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"


def _device_id(entry: Mapping[str, Any]) -> str:
    return f"{_text(entry, 'driver')}/{_text(entry, 'pool')}/{_text(entry, 'device')}"


def _allocated(status: Mapping[str, Any]) -> set[str]:
    allocation = status.get("allocation") if isinstance(status.get("allocation"), Mapping) else {}
    devices = allocation.get("devices") if isinstance(allocation.get("devices"), Mapping) else {}
    return {_device_id(r) for r in _dicts(devices.get("results"))}


def check_device_statuses(status: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    entries = _dicts(status.get("devices"))
    if not entries:
        return
    allocated = _allocated(status)
    at = join(path, "devices")
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        _device_status(entry, f"{at}[{i}]", allocated, ctx)
    for i, entry in enumerate(entries):
        key = _device_id(entry)
        if key in seen:
            ctx.add(ValidationError(f"{at}[{i}]", f"Duplicate value: {key}"))
        seen.add(key)


def _device_status(entry: Mapping[str, Any], path: str, allocated: set[str], ctx: Ctx) -> None:
    device_ref(entry, path, ctx)
    if _device_id(entry) not in allocated:
        # upstream's value is a SharedDeviceID, a fmt.Stringer: printed bare, not quoted
        ctx.add(ValidationError(path, f"Invalid value: {_device_id(entry)}: must be an allocated device in the claim"))
    conditions = entry.get("conditions")
    if isinstance(conditions, list) and len(conditions) > MAX_CONDITIONS:
        ctx.add(too_many(join(path, "conditions"), len(conditions), MAX_CONDITIONS))
    if entry.get("data") is not None:
        raw_extension(entry["data"], join(path, "data"), DATA_MAX, ctx)
    network = entry.get("networkData")
    if isinstance(network, Mapping):
        _network_data(network, join(path, "networkData"), ctx)


def _network_data(network: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    if len(_text(network, "interfaceName").encode()) > INTERFACE_NAME_MAX:
        ctx.add(too_long(join(path, "interfaceName"), INTERFACE_NAME_MAX))
    if len(_text(network, "hardwareAddress").encode()) > HARDWARE_ADDRESS_MAX:
        ctx.add(too_long(join(path, "hardwareAddress"), HARDWARE_ADDRESS_MAX))
    ips = network.get("ips") if isinstance(network.get("ips"), list) else []
    at = join(path, "ips")
    if len(ips) > MAX_IPS:
        ctx.add(too_many(at, len(ips), MAX_IPS))
        return
    for i, ip in enumerate(ips):
        _interface_address(ip if isinstance(ip, str) else str(ip), f"{at}[{i}]", ctx)
    seen: set[Any] = set()
    for i, ip in enumerate(ips):
        if ip in seen:
            ctx.add(duplicate(f"{at}[{i}]", ip))
        seen.add(ip)


def interface_address_errors(value: str) -> list[str]:
    """IsValidInterfaceAddress's messages for `value`: an address with its prefix length,
    written canonically."""
    if "/" not in value:
        return [_NOT_CIDR]
    sloppy = _SLOPPY_V4.fullmatch(value)  # Go's ParseCIDRSloppy reads "010.0.0.1" as 10.0.0.1
    text = ".".join(str(int(o)) for o in sloppy.groups()[:4]) + "/" + sloppy.group(5) if sloppy else value
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError:
        return [_NOT_CIDR]
    address, prefix = iface.ip, iface.network.prefixlen
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None and prefix >= 96:
        address, prefix = address.ipv4_mapped, prefix - 96  # Go prints a mapped address as IPv4
    canonical = f"{address}/{prefix}"
    return [] if value == canonical else [f'must be in canonical form ("{canonical}")']


def _interface_address(value: str, path: str, ctx: Ctx) -> None:
    for msg in interface_address_errors(value):
        ctx.add(invalid(path, value, msg))


def _share_key(entry: Mapping[str, Any]) -> tuple[str, str]:
    return _device_id(entry), str(entry.get("shareID") or "")


def drop_deallocated_status_devices(new: Any, old: Mapping[str, Any]) -> Any:
    """kube-apiserver's dropDeallocatedStatusDevices (the claim strategy's PrepareForUpdate):
    an update that takes devices out of the allocation also takes their entries out of
    status.devices, so clients unaware of device status can deallocate."""
    if not isinstance(new, dict):
        return new
    status = new.get("status")
    if type(status) is not dict and not isinstance(status, Mapping):  # (a dict asked first: typing's ABC is slow)
        return new
    entries = status.get("devices")
    if not isinstance(entries, list):  # no device statuses to drop (the common case: asked first)
        return new
    old_status = old.get("status") if isinstance(old.get("status"), Mapping) else {}

    def results(st: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        allocation = st.get("allocation") if isinstance(st.get("allocation"), Mapping) else {}
        devices = allocation.get("devices") if isinstance(allocation.get("devices"), Mapping) else {}
        return _dicts(devices.get("results"))

    gone = {_share_key(r) for r in results(old_status)} - {_share_key(r) for r in results(status)}
    if not gone:
        return new
    kept = [e for e in entries if not (isinstance(e, Mapping) and _share_key(e) in gone)]
    new_status = {k: v for k, v in status.items() if k != "devices"}
    if kept:
        new_status["devices"] = kept
    return {**new, "status": new_status}

