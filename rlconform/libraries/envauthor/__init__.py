"""envauthor"""
