"""The instructor's server: the formgrader, which JupyterLab shows in a frame of its own page."""

c = get_config()  # noqa: F821 - provided by Jupyter Server when it loads this file

# JupyterHub (4.1 and later) forbids every frame (`frame-ancestors 'none'`), and the formgrader
# panel of JupyterLab then stays blank. Frames of the server's own pages are safe to allow.
c.ServerApp.tornado_settings = {
    "headers": {"Content-Security-Policy": "frame-ancestors 'self'"},
}
