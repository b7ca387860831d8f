"""The web shell: `ragx serve`'s pages (search, communities, runs) over the api facade.

Starlette routes and Jinja2 templates, no JavaScript build; imports only api, schemas, errors and log.
"""
