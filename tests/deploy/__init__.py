"""Deployment: template.yaml's rules, cold-start imports, and `sam build` of the layers."""
