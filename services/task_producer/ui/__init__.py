"""The producer's web dashboard (`/ui`): server-rendered Jinja2 pages, no JS build step."""
