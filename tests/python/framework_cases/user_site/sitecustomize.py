"""The user's own sitecustomize: the hook must chain-load it."""
import sys

USER_MARK = "user sitecustomize ran"
sys.stderr.write("USER SITECUSTOMIZE RAN\n")
