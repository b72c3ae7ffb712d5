"""Serving Playbook rules engine: pure, typed functions from config.json to a serving plan."""
