"""gymnasium"""
