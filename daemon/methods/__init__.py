"""RPC handlers, one module per request family (pueue's layout): each registers its routes
on the daemon's `Dispatcher` through an `install(dispatcher, services)` function."""
