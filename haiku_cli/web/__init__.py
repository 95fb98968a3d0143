"""`haiku serve`: the selected databases as a one-page web app, its conversation streamed over AG-UI.

`runs` answers AG-UI requests with the chat's composition, `app` holds the routes (and what a citation
opens), `guard` refuses other sites and requests without the token, and `static/` is the page itself.
"""
