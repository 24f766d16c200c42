"""A whole HTML page inside a notebook's output: an iframe whose srcdoc is the page, so its
style and script stay its own (nothing is fetched: the pages are self-contained)."""

import html


def iframe(page, height):
    return (f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%; height:{height}px; border:1px solid #ddd" '
            'sandbox="allow-scripts"></iframe>')
