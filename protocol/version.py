"""Versions: the package release and the wire-protocol range this build speaks.

The protocol version is an integer that advances only when an old peer could misread a new
message; additive changes (new optional fields, new methods) do not advance it, because
unknown fields are ignored and new fields always carry defaults.
"""

VERSION = "0.1.0"

#: Oldest and newest client/daemon protocol this build can speak.
PROTOCOL_MIN = 1
PROTOCOL_MAX = 1
