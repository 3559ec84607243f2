"""The typed messages of every RPC method, one module per method family.

Each module holds the params *and* the results of its family as msgspec Structs; the
method registry (`vigil.protocol.methods`) names them, the daemon validates with them, the
client decodes with them and `vigil protocol schema` exports them.
"""
